//! Lexing and parsing (in progress).
