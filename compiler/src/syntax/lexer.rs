//! Lexer: source text → tokens with spans.
//!
//! Expects any UTF-8 text; guarantees a token list ending in `Eof` and never
//! fails: a character it cannot read becomes a `Tok::Error` token, which the
//! parser reports with its span. Network literals are recognised here, where
//! the characters are still adjacent: `10.0.0.1`, `10.0.0.0/8`, `2001:db8::1`,
//! `2001:db8::/32`, `de:ad:be:ef:00:01`. A plain `1.` (a fact ending in an
//! integer) stays an integer followed by a period.

use crate::source::{FileId, Span};

#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    Ident(String),
    /// `.decl`, `.type`, `.input`, `.output`, `.printsize`, `.include`, or an
    /// unknown `.word` at the start of an item (the parser reports it).
    Directive(String),
    Str(String),
    Int(String),
    Unsigned(String),
    Float(String),
    Ipv4(String),
    Prefix4(String),
    Ipv6(String),
    Prefix6(String),
    Mac(String),
    LParen,
    RParen,
    LBrace,
    RBrace,
    Comma,
    Dot,
    Colon,
    Semi,
    Bang,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Caret,
    /// `:-`
    If,
    /// `<:`
    Subtype,
    Pipe,
    At,
    Error(String),
    Eof,
}

impl Tok {
    /// How the token is named in "expected X, found Y" messages.
    pub fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("`{s}`"),
            Tok::Directive(s) => format!("`.{s}`"),
            Tok::Str(s) => format!("string \"{s}\""),
            Tok::Int(s) | Tok::Unsigned(s) | Tok::Float(s) => format!("number `{s}`"),
            Tok::Ipv4(s) | Tok::Ipv6(s) | Tok::Prefix4(s) | Tok::Prefix6(s) | Tok::Mac(s) => {
                format!("`{s}`")
            }
            Tok::Error(s) => format!("`{s}`"),
            Tok::Eof => "end of file".to_string(),
            t => format!("`{}`", t.punct()),
        }
    }

    fn punct(&self) -> &'static str {
        match self {
            Tok::LParen => "(",
            Tok::RParen => ")",
            Tok::LBrace => "{",
            Tok::RBrace => "}",
            Tok::Comma => ",",
            Tok::Dot => ".",
            Tok::Colon => ":",
            Tok::Semi => ";",
            Tok::Bang => "!",
            Tok::Eq => "=",
            Tok::Ne => "!=",
            Tok::Lt => "<",
            Tok::Le => "<=",
            Tok::Gt => ">",
            Tok::Ge => ">=",
            Tok::Plus => "+",
            Tok::Minus => "-",
            Tok::Star => "*",
            Tok::Slash => "/",
            Tok::Percent => "%",
            Tok::Caret => "^",
            Tok::If => ":-",
            Tok::Subtype => "<:",
            Tok::Pipe => "|",
            Tok::At => "@",
            _ => "?",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    pub tok: Tok,
    pub span: Span,
    /// The token is the first on its line (used to end directives, which have no `.`).
    pub line_start: bool,
}

/// Directive names the language knows.
pub const DIRECTIVES: &[&str] = &[
    "decl",
    "type",
    "input",
    "output",
    "printsize",
    "include",
    "comp",
    "init",
    "override",
    "pragma",
];

pub fn lex(file: FileId, text: &str) -> Vec<Token> {
    let mut lx = Lexer {
        file,
        src: text,
        b: text.as_bytes(),
        pos: 0,
        out: Vec::new(),
    };
    lx.run();
    lx.out
}

struct Lexer<'a> {
    file: FileId,
    src: &'a str,
    b: &'a [u8],
    pos: usize,
    out: Vec<Token>,
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'?'
}

impl<'a> Lexer<'a> {
    fn peek(&self, k: usize) -> u8 {
        *self.b.get(self.pos + k).unwrap_or(&0)
    }

    fn push(&mut self, tok: Tok, start: usize) {
        let prev_end = self.out.last().map_or(0, |t| t.span.end as usize);
        let line_start = self.out.is_empty() || self.src[prev_end..start].contains('\n');
        self.out.push(Token {
            tok,
            span: Span::new(self.file, start, self.pos),
            line_start,
        });
    }

    fn run(&mut self) {
        loop {
            self.skip_trivia();
            let start = self.pos;
            if self.pos >= self.b.len() {
                self.push(Tok::Eof, start);
                return;
            }
            if let Some(tok) = self.network_literal() {
                self.push(tok, start);
                continue;
            }
            let c = self.peek(0);
            let tok = match c {
                b'"' => self.string(),
                b'0'..=b'9' => self.number(),
                c if is_ident_start(c) => {
                    while is_ident_char(self.peek(0)) {
                        self.pos += 1;
                    }
                    // A qualified name `inst.rel` (a component instance's
                    // relation) is one identifier: the `.` has a letter
                    // directly on both sides, which no rule end has.
                    while self.peek(0) == b'.' && self.peek(1).is_ascii_alphabetic() {
                        self.pos += 1;
                        while is_ident_char(self.peek(0)) {
                            self.pos += 1;
                        }
                    }
                    Tok::Ident(self.src[start..self.pos].to_string())
                }
                b'.' if is_ident_start(self.peek(1)) && self.at_item_start() => {
                    self.pos += 1;
                    while is_ident_char(self.peek(0)) {
                        self.pos += 1;
                    }
                    Tok::Directive(self.src[start + 1..self.pos].to_string())
                }
                _ => self.punct(),
            };
            self.push(tok, start);
        }
    }

    /// A `.word` is a directive only where an item may start: at the start of
    /// the text or after a token that ends an item (`.`, `)` of a directive...).
    /// We approximate: the previous token is `.`, `)` or an identifier/string
    /// on an earlier line, or there is none.
    fn at_item_start(&self) -> bool {
        let word_end = {
            let mut p = self.pos + 1;
            while p < self.b.len() && is_ident_char(self.b[p]) {
                p += 1;
            }
            p
        };
        let word = &self.src[self.pos + 1..word_end];
        if DIRECTIVES.contains(&word) {
            return true;
        }
        // An unknown word right after a newline is most likely a mistyped directive.
        match self.out.last() {
            None => true,
            Some(t) => {
                let between = &self.src[t.span.end as usize..self.pos];
                between.contains('\n') && !matches!(t.tok, Tok::Comma | Tok::If | Tok::LParen)
            }
        }
    }

    fn skip_trivia(&mut self) {
        loop {
            let c = self.peek(0);
            if c == b' ' || c == b'\t' || c == b'\n' || c == b'\r' {
                self.pos += 1;
            } else if c == b'/' && self.peek(1) == b'/' {
                while self.pos < self.b.len() && self.peek(0) != b'\n' {
                    self.pos += 1;
                }
            } else if c == b'/' && self.peek(1) == b'*' {
                let start = self.pos;
                self.pos += 2;
                while self.pos < self.b.len() && !(self.peek(0) == b'*' && self.peek(1) == b'/') {
                    self.pos += 1;
                }
                if self.pos >= self.b.len() {
                    // never drop the rest of the file silently
                    self.push(
                        Tok::Error("unterminated comment: `/*` with no closing `*/`".into()),
                        start,
                    );
                }
                self.pos = (self.pos + 2).min(self.b.len());
            } else if c == b'#' && (self.pos == 0 || self.b[self.pos - 1] == b'\n') {
                self.preprocessor_line();
            } else {
                return;
            }
        }
    }

    /// A line starting with `#` (Souffle runs the C preprocessor on its
    /// input). A line marker (`# 12 "f.dl"`, `#line 12`) is skipped, as the
    /// preprocessor's output carries them; `#include "file"` is read as
    /// `.include "file"` (a `Directive` token here, the file name lexed next);
    /// anything else (`#define`, `#ifdef`, `#include <file>`, ...) is an
    /// error token naming it, never a line dropped.
    fn preprocessor_line(&mut self) {
        let start = self.pos;
        let mut end = self.pos;
        while end < self.b.len() && self.b[end] != b'\n' {
            end += 1;
        }
        let line = self.src[start + 1..end].trim_start();
        let word: String = line
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        if word == "line" || line.starts_with(|c: char| c.is_ascii_digit()) {
            self.pos = end;
            return;
        }
        if word == "include" && line["include".len()..].trim_start().starts_with('"') {
            self.pos = start + 1 + (self.src[start + 1..end].len() - line.len()) + "include".len();
            self.push(Tok::Directive("include".into()), start);
            return;
        }
        self.pos = end;
        let what = if word == "include" {
            "`#include <...>` (a system header)".to_string()
        } else {
            format!("`#{word}`")
        };
        self.push(
            Tok::Error(format!(
                "unsupported preprocessor line {what}: netc runs no C preprocessor (`#include \"file\"` and `.include \"file\"` are read; see specs/language.md)"
            )),
            start,
        );
    }

    fn string(&mut self) -> Tok {
        self.pos += 1;
        let mut s = String::new();
        loop {
            let Some(ch) = self.src[self.pos..].chars().next() else {
                return Tok::Error("unterminated string".into());
            };
            self.pos += ch.len_utf8();
            match ch {
                '"' => return Tok::Str(s),
                '\n' => return Tok::Error("unterminated string".into()),
                '\\' => {
                    let Some(e) = self.src[self.pos..].chars().next() else {
                        return Tok::Error("unterminated string".into());
                    };
                    self.pos += e.len_utf8();
                    s.push(match e {
                        'n' => '\n',
                        't' => '\t',
                        'r' => '\r',
                        other => other,
                    });
                }
                c => s.push(c),
            }
        }
    }

    fn number(&mut self) -> Tok {
        let start = self.pos;
        if self.peek(0) == b'0' && matches!(self.peek(1), b'x' | b'X' | b'b') {
            self.pos += 2;
            while self.peek(0).is_ascii_hexdigit() {
                self.pos += 1;
            }
        } else {
            while self.peek(0).is_ascii_digit() {
                self.pos += 1;
            }
            if self.peek(0) == b'.' && self.peek(1).is_ascii_digit() {
                self.pos += 1;
                while self.peek(0).is_ascii_digit() {
                    self.pos += 1;
                }
                if matches!(self.peek(0), b'e' | b'E') {
                    self.pos += 1;
                    if matches!(self.peek(0), b'+' | b'-') {
                        self.pos += 1;
                    }
                    while self.peek(0).is_ascii_digit() {
                        self.pos += 1;
                    }
                }
                return Tok::Float(self.src[start..self.pos].to_string());
            }
        }
        let text = self.src[start..self.pos].to_string();
        if self.peek(0) == b'u' && !is_ident_char(self.peek(1)) {
            self.pos += 1;
            return Tok::Unsigned(text);
        }
        Tok::Int(text)
    }

    /// Tries MAC, IPv6 and IPv4 (with optional `/len`) at the current position.
    fn network_literal(&mut self) -> Option<Tok> {
        let rest = &self.src[self.pos..];
        let c = self.peek(0);
        if !(c.is_ascii_hexdigit() || (c == b':' && self.peek(1) == b':')) {
            return None;
        }
        if self.pos > 0 && is_ident_char(self.b[self.pos - 1]) {
            return None;
        }
        // The longest run of characters an address can contain.
        let run_len = rest
            .bytes()
            .take_while(|b| b.is_ascii_hexdigit() || *b == b':' || *b == b'.')
            .count();
        let mut run = &rest[..run_len];
        // A trailing `.` ends the item (`r(10.0.0.1).` has no trailing dot in the run
        // because `)` stops it, but `x = 10.0.0.1.` does).
        while run.ends_with('.') && run.matches('.').count() > 3 {
            run = &run[..run.len() - 1];
        }
        if run.ends_with('.') && run.matches('.').count() == 4 {
            run = &run[..run.len() - 1];
        }
        let next = rest.as_bytes().get(run.len()).copied().unwrap_or(0);
        if is_ident_char(next) && next != b'/' {
            return None;
        }
        let colons = run.matches(':').count();
        let kind = if colons == 5 && run.len() == 17 && run.split(':').all(|g| g.len() == 2) {
            Some(0) // MAC
        } else if colons >= 2 && run.parse::<std::net::Ipv6Addr>().is_ok() {
            Some(6)
        } else if colons == 0
            && run.matches('.').count() == 3
            && run.parse::<std::net::Ipv4Addr>().is_ok()
        {
            Some(4)
        } else {
            None
        }?;
        self.pos += run.len();
        if kind == 0 {
            return Some(Tok::Mac(run.to_string()));
        }
        if self.peek(0) == b'/' && self.peek(1).is_ascii_digit() {
            let s = self.pos;
            self.pos += 1;
            while self.peek(0).is_ascii_digit() {
                self.pos += 1;
            }
            let full = format!("{run}{}", &self.src[s..self.pos]);
            return Some(if kind == 4 {
                Tok::Prefix4(full)
            } else {
                Tok::Prefix6(full)
            });
        }
        Some(if kind == 4 {
            Tok::Ipv4(run.to_string())
        } else {
            Tok::Ipv6(run.to_string())
        })
    }

    fn punct(&mut self) -> Tok {
        let two = (self.peek(0), self.peek(1));
        let (tok, len) = match two {
            (b':', b'-') => (Tok::If, 2),
            (b'<', b':') => (Tok::Subtype, 2),
            (b'!', b'=') => (Tok::Ne, 2),
            (b'<', b'=') => (Tok::Le, 2),
            (b'>', b'=') => (Tok::Ge, 2),
            (b'(', _) => (Tok::LParen, 1),
            (b')', _) => (Tok::RParen, 1),
            (b'{', _) => (Tok::LBrace, 1),
            (b'}', _) => (Tok::RBrace, 1),
            (b',', _) => (Tok::Comma, 1),
            (b'.', _) => (Tok::Dot, 1),
            (b':', _) => (Tok::Colon, 1),
            (b';', _) => (Tok::Semi, 1),
            (b'!', _) => (Tok::Bang, 1),
            (b'=', _) => (Tok::Eq, 1),
            (b'<', _) => (Tok::Lt, 1),
            (b'>', _) => (Tok::Gt, 1),
            (b'+', _) => (Tok::Plus, 1),
            (b'-', _) => (Tok::Minus, 1),
            (b'*', _) => (Tok::Star, 1),
            (b'/', _) => (Tok::Slash, 1),
            (b'%', _) => (Tok::Percent, 1),
            (b'^', _) => (Tok::Caret, 1),
            (b'|', _) => (Tok::Pipe, 1),
            (b'@', _) => (Tok::At, 1),
            _ => {
                let ch = self.src[self.pos..].chars().next().unwrap_or('\u{fffd}');
                self.pos += ch.len_utf8().max(1);
                return Tok::Error(ch.to_string());
            }
        };
        self.pos += len;
        tok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        lex(FileId(0), s).into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn an_unterminated_block_comment_is_an_error_not_the_end_of_the_file() {
        let t = toks("a(1).\n/* never closed\nb(2).\n");
        assert!(
            matches!(&t[..], [.., Tok::Error(e), Tok::Eof] if e.starts_with("unterminated comment")),
            "{t:?}"
        );
        assert!(!t.contains(&Tok::Ident("b".into())));
    }

    #[test]
    fn preprocessor_lines_are_read_skipped_or_refused_never_dropped() {
        // `#include "file"` is `.include "file"`
        assert_eq!(
            toks("#include \"edb.dl\"\na(1)."),
            toks(".include \"edb.dl\"\na(1).")
        );
        // line markers, as the preprocessor writes them, are skipped
        assert_eq!(toks("# 1 \"x.dl\"\n#line 3\na(1)."), toks("a(1)."));
        // everything else is an error token that names it
        for (line, name) in [
            ("#define N 3", "`#define`"),
            ("#ifdef X", "`#ifdef`"),
            ("#pragma once", "`#pragma`"),
            ("#include <x.dl>", "`#include <...>`"),
        ] {
            let t = toks(&format!("{line}\na(1)."));
            assert!(
                matches!(&t[0], Tok::Error(e) if e.contains(name) && e.contains("preprocessor")),
                "{line}: {t:?}"
            );
        }
    }

    #[test]
    fn network_literals_are_single_tokens() {
        assert_eq!(
            toks("r(10.0.0.1, 10.0.0.0/8, 2001:db8::1, 2001:db8::/32, de:ad:be:ef:00:01)."),
            vec![
                Tok::Ident("r".into()),
                Tok::LParen,
                Tok::Ipv4("10.0.0.1".into()),
                Tok::Comma,
                Tok::Prefix4("10.0.0.0/8".into()),
                Tok::Comma,
                Tok::Ipv6("2001:db8::1".into()),
                Tok::Comma,
                Tok::Prefix6("2001:db8::/32".into()),
                Tok::Comma,
                Tok::Mac("de:ad:be:ef:00:01".into()),
                Tok::RParen,
                Tok::Dot,
                Tok::Eof
            ]
        );
    }

    #[test]
    fn a_fact_ending_in_an_integer_keeps_its_period() {
        assert_eq!(
            toks("r(1)."),
            vec![
                Tok::Ident("r".into()),
                Tok::LParen,
                Tok::Int("1".into()),
                Tok::RParen,
                Tok::Dot,
                Tok::Eof
            ]
        );
        assert_eq!(
            toks("x = 1."),
            vec![
                Tok::Ident("x".into()),
                Tok::Eq,
                Tok::Int("1".into()),
                Tok::Dot,
                Tok::Eof
            ]
        );
        assert_eq!(
            toks("x = 10.0.0.1."),
            vec![
                Tok::Ident("x".into()),
                Tok::Eq,
                Tok::Ipv4("10.0.0.1".into()),
                Tok::Dot,
                Tok::Eof
            ]
        );
    }

    #[test]
    fn declarations_with_colons_are_not_addresses() {
        assert_eq!(
            toks(".decl e(a:number, ab:cd)"),
            vec![
                Tok::Directive("decl".into()),
                Tok::Ident("e".into()),
                Tok::LParen,
                Tok::Ident("a".into()),
                Tok::Colon,
                Tok::Ident("number".into()),
                Tok::Comma,
                Tok::Ident("ab".into()),
                Tok::Colon,
                Tok::Ident("cd".into()),
                Tok::RParen,
                Tok::Eof
            ]
        );
    }

    #[test]
    fn floats_unsigned_and_comments() {
        assert_eq!(
            toks("1.5 42u 0x2a // c\n/* block */ 7"),
            vec![
                Tok::Float("1.5".into()),
                Tok::Unsigned("42".into()),
                Tok::Int("0x2a".into()),
                Tok::Int("7".into()),
                Tok::Eof
            ]
        );
    }
}
