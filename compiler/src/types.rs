//! The type system's vocabulary.
//!
//! Every value has one [`Prim`] type. A user's `.type` declaration names a
//! subtype of one primitive (`.type Host <: symbol`), an equivalent name
//! (`.type Vni = unsigned`), or a union (`.type Ip = ipv4 | ipv6`). Subtypes
//! are distinct for checking (a `Host` is not a `Tenant`) but share the
//! primitive's representation; a union's values may be of any member.

use std::fmt;

/// The primitive types: Souffle's four plus netc's network types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Prim {
    Number,
    Unsigned,
    Float,
    Symbol,
    Ipv4,
    Ipv6,
    Prefix4,
    Prefix6,
    Mac,
}

impl Prim {
    pub const ALL: [Prim; 9] = [
        Prim::Number,
        Prim::Unsigned,
        Prim::Float,
        Prim::Symbol,
        Prim::Ipv4,
        Prim::Ipv6,
        Prim::Prefix4,
        Prim::Prefix6,
        Prim::Mac,
    ];

    /// The name used in declarations.
    pub fn name(self) -> &'static str {
        match self {
            Prim::Number => "number",
            Prim::Unsigned => "unsigned",
            Prim::Float => "float",
            Prim::Symbol => "symbol",
            Prim::Ipv4 => "ipv4",
            Prim::Ipv6 => "ipv6",
            Prim::Prefix4 => "prefix4",
            Prim::Prefix6 => "prefix6",
            Prim::Mac => "mac",
        }
    }

    pub fn from_name(s: &str) -> Option<Prim> {
        Prim::ALL.into_iter().find(|p| p.name() == s)
    }

    pub fn is_numeric(self) -> bool {
        matches!(self, Prim::Number | Prim::Unsigned | Prim::Float)
    }

    /// Whether values of this type can be compared with `<` and friends.
    /// Every primitive is ordered; symbols compare by their text.
    pub fn is_ordered(self) -> bool {
        true
    }
}

impl fmt::Display for Prim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
